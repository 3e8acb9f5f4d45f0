# A provisioner that writes down the environment the engine gives it.
variable "dir" {
  type = string
}

resource "terraform_data" "dump" {
  input = "dumped"
  provisioner "local-exec" {
    command = "env > ${var.dir}/env"
  }
}

output "input" {
  value = terraform_data.dump.input
}
