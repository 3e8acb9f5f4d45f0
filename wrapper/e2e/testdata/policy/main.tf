# One file of hashicorp/local, whose filename the variables choose: the
# policy tests (wrapper/e2e/e2e_policy_test.go) point it inside and outside
# the directory a policy allows, and replace or destroy it in production.
terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
    local   = { source = "hashicorp/local", version = "2.9.0" }
  }
}

variable "file" {
  description = "The file the scope writes."
  type        = string
}

resource "sponson_scope" "this" {}

resource "local_file" "f" {
  filename = var.file
  content  = "written by a scope\n"
}
