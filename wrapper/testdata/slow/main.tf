# A configuration whose apply takes a few seconds, so that concurrent runs
# in one scope overlap for certain.
variable "sleep" {
  type    = number
  default = 4
}

resource "terraform_data" "slow" {
  input = "slow"
  provisioner "local-exec" {
    command = "sleep ${var.sleep}"
  }
}
