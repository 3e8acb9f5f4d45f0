# A configuration that was applied with its own backend before Sponson:
# `sponson adopt` takes its state into a scope. The tests add the backend
# block (backend.tf) and remove it again to retire the old backend.
variable "name" {
  type    = string
  default = "kept"
}

resource "terraform_data" "one" {
  input = var.name
}

resource "terraform_data" "two" {
  input = "${var.name}-two"
}
