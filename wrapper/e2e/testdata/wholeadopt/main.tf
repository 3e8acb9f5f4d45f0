# Issue 48: objects the engine reported complete before the whole job was
# killed, ahead of any state write, and what the next run adopts of them.
# Every create completes before the gate, whose provisioner marks that it
# started and waits until the file `open` exists in var.marks; the kill
# comes while it waits. The provisioners of the terraform_data and the
# null_resource make a file in var.out on create and remove it on destroy
# (self.input, self.triggers): the destroy works only on a whole object.
terraform {
  required_providers {
    local  = { source = "hashicorp/local", version = "2.9.0" }
    null   = { source = "hashicorp/null", version = "3.3.1" }
    random = { source = "hashicorp/random", version = "3.9.0" }
    time   = { source = "hashicorp/time", version = "0.14.2" }
    tls    = { source = "hashicorp/tls", version = "4.2.1" }
  }
}

variable "marks" {
  type = string
}

variable "out" {
  type = string
}

resource "terraform_data" "obj" {
  count            = 3
  input            = "${var.out}/made-${count.index}"
  triggers_replace = count.index
  provisioner "local-exec" {
    command = "touch ${self.input}"
  }
  provisioner "local-exec" {
    when    = destroy
    command = "rm ${self.input}"
  }
}

resource "null_resource" "n" {
  triggers = { file = "${var.out}/made-null" }
  provisioner "local-exec" {
    command = "touch ${self.triggers.file}"
  }
  provisioner "local-exec" {
    when    = destroy
    command = "rm ${self.triggers.file}"
  }
}

resource "random_string" "s" {
  length  = 12
  special = false
  keepers = { k = "v" }
}

resource "random_uuid" "u" {
  keepers = { k = "v" }
}

resource "random_integer" "i" {
  min     = 1
  max     = 1000000
  keepers = { k = "v" }
}

resource "random_pet" "p" {}

resource "random_id" "d" {
  byte_length = 6
  prefix      = "srv-"
  keepers     = { k = "v" }
}

resource "tls_private_key" "k" {
  algorithm = "ED25519"
}

resource "time_static" "t" {
  triggers = { k = "v" }
}

resource "local_file" "f" {
  filename = "${var.out}/f.txt"
  content  = "f\n"
}

resource "terraform_data" "gate" {
  depends_on = [terraform_data.obj, null_resource.n, random_string.s, random_uuid.u, random_integer.i,
  random_pet.p, random_id.d, tls_private_key.k, time_static.t, local_file.f]
  provisioner "local-exec" {
    command = "touch ${var.marks}/started; while [ ! -e ${var.marks}/open ]; do sleep 0.1; done"
  }
}
