# A configuration with a sensitive variable, for summaries: the engine's
# text must never show its value, the current one or an earlier one.
variable "password" {
  type      = string
  sensitive = true
}

variable "name" {
  type    = string
  default = "app"
}

resource "terraform_data" "db" {
  input = { name = "db-${var.name}", password = var.password }
}

resource "terraform_data" "app" {
  input = var.name
}
