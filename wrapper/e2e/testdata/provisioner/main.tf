# A create whose provisioner outlives a killed run unless sponson ends it:
# it marks that it started, sleeps, then marks that it finished.
variable "dir" {
  type = string
}

resource "terraform_data" "p" {
  input = "provisioned"
  provisioner "local-exec" {
    command = "echo started > ${var.dir}/started; sleep 60; echo done > ${var.dir}/done"
  }
}
