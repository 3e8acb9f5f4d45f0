# N resources: the configuration of the wrapper-overhead benchmark. `delay`
# makes each create take that long, as cloud resources take time.
variable "n" {
  type    = number
  default = 50
}

# `tag` changes every resource's input: an apply with changes.
variable "tag" {
  type    = string
  default = ""
}

variable "delay" {
  type    = number
  default = 0
}

resource "terraform_data" "r" {
  count = var.n
  input = "resource-${count.index}${var.tag}"
  provisioner "local-exec" {
    command = var.delay > 0 ? "sleep ${var.delay}" : "true"
  }
}
