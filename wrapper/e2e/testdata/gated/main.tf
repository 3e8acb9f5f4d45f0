# An apply that holds its scope's lease until the test lets it finish: with
# a gate, the gate resource's create waits for that file to exist, so a test
# can start a second run while the first is certainly applying, without
# timing.
variable "input" {
  type = string
}

variable "gate" {
  type    = string
  default = ""
}

resource "terraform_data" "app" {
  input = var.input
}

resource "terraform_data" "gate" {
  count            = var.gate == "" ? 0 : 1
  triggers_replace = var.input
  provisioner "local-exec" {
    command = "while [ ! -e '${var.gate}' ]; do sleep 0.05; done"
  }
}
