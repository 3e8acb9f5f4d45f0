# A root module of a monorepo for the stack tests: named objects of the
# fixture provider (so that two root modules can collide on one), and a gate
# that holds the apply until the file `gate` names exists, so a test can
# keep one root module's run in the middle of its apply while another runs.
terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
    fixture = { source = "sponson/fixture" }
  }
}

variable "objects" {
  type    = map(string)
  default = {}
}

variable "gate" {
  type    = string
  default = ""
}

resource "sponson_scope" "this" {
  identity = {
    fixture_object = ["name"]
  }
}

resource "terraform_data" "gate" {
  count = var.gate == "" ? 0 : 1
  provisioner "local-exec" {
    command = "while [ ! -e '${var.gate}' ]; do sleep 0.1; done"
  }
}

resource "fixture_object" "o" {
  for_each   = var.objects
  name       = each.value
  value      = "made by ${sponson_scope.this.name}"
  depends_on = [terraform_data.gate]
}
