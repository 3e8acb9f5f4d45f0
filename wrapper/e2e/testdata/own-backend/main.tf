# A configuration that keeps its own backend: sponson gives each scope its
# own workspace in it. (workspace_dir: OpenTofu treats workspaces in the
# default terraform.tfstate.d as local state to migrate at every fresh init.)
terraform {
  backend "local" {
    workspace_dir = "states"
  }
}

variable "name" {
  type    = string
  default = "thing"
}

resource "terraform_data" "thing" {
  input = var.name
}
