# The chain of issue 25: an object created first, then a terraform_data
# gate whose provisioner marks that it started and waits until the file
# `open` exists in var.marks, then objects that depend on the gate in every
# way the engine knows: a reference under for_each, depends_on under count,
# and a module whose input is the gate's output.
terraform {
  required_providers {
    fixture = { source = "sponson/fixture" }
  }
}

variable "marks" {
  type = string
}

variable "prefix" {
  type    = string
  default = "c"
}

resource "fixture_object" "a" {
  name  = "${var.prefix}-a"
  value = "first"
}

resource "terraform_data" "gate" {
  input = fixture_object.a.id
  provisioner "local-exec" {
    command = "touch ${var.marks}/started; while [ ! -e ${var.marks}/open ]; do sleep 0.1; done"
  }
}

resource "fixture_object" "after" {
  for_each = toset(["x", "y"])
  name     = "${var.prefix}-${each.key}"
  value    = terraform_data.gate.output
}

resource "fixture_object" "later" {
  count      = 1
  name       = "${var.prefix}-later-${count.index}"
  depends_on = [terraform_data.gate]
}

module "m" {
  source = "./m"
  name   = "${var.prefix}-m"
  value  = terraform_data.gate.output
}
