# The chain of issue 48's real-provider loop (TestE2ERealProvidersRandomKills):
# random_pet -> local_file named after it -> terraform_data whose create-time
# provisioner makes a file named after the pet (its destroy-time one removes
# it through self.input), two of each, all writing into var.out.
terraform {
  required_providers {
    local  = { source = "hashicorp/local", version = "2.9.0" }
    random = { source = "hashicorp/random", version = "3.9.0" }
  }
}

variable "out" {
  type = string
}

resource "random_pet" "p" {
  count = 2
}

resource "local_file" "f" {
  count    = 2
  filename = "${var.out}/${random_pet.p[count.index].id}.txt"
  content  = "file ${count.index}\n"
}

resource "terraform_data" "t" {
  count            = 2
  input            = "${var.out}/made-${random_pet.p[count.index].id}"
  triggers_replace = local_file.f[count.index].id
  provisioner "local-exec" {
    command = "sleep 1; touch ${self.input}"
  }
  provisioner "local-exec" {
    when    = destroy
    command = "rm -f ${self.input}"
  }
}
