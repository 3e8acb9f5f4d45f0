# The chain of issue 25 over HashiCorp's local provider (the real-provider
# tier): local_file.a, then a terraform_data gate whose provisioner marks
# that it started and waits until the file `open` exists in var.marks, then
# three local_files that depend on the gate (a reference under for_each,
# depends_on under count).
terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "2.9.0" }
  }
}

variable "marks" {
  type = string
}

variable "out" {
  type = string
}

variable "a" {
  description = "The content of a.txt: a change replaces local_file.a, and the gate and the files after it."
  type        = string
  default     = "first"
}

resource "local_file" "a" {
  filename = "${var.out}/a.txt"
  content  = "${var.a}\n"
}

resource "terraform_data" "gate" {
  input            = local_file.a.id
  triggers_replace = local_file.a.id
  provisioner "local-exec" {
    command = "touch ${var.marks}/started; while [ ! -e ${var.marks}/open ]; do sleep 0.1; done"
  }
}

resource "local_file" "after" {
  for_each = toset(["x", "y"])
  filename = "${var.out}/${each.key}.txt"
  content  = "after ${terraform_data.gate.output}\n"
}

resource "local_file" "later" {
  count      = 1
  filename   = "${var.out}/later-${count.index}.txt"
  content    = "later\n"
  depends_on = [terraform_data.gate]
}
