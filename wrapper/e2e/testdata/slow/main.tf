# A configuration whose apply takes a few seconds, so that concurrent runs
# in one scope overlap for certain and a run can be stopped mid-apply.
variable "sleep" {
  type    = number
  default = 4
}

variable "input" {
  type    = string
  default = "slow"
}

resource "terraform_data" "fast" {
  input = var.input
}

resource "terraform_data" "slow" {
  input = var.input
  provisioner "local-exec" {
    command = "sleep ${var.sleep}"
  }
}
