terraform {
  required_providers {
    fixture = { source = "sponson/fixture" }
  }
}

variable "name" {
  type = string
}

variable "value" {
  type = string
}

resource "fixture_object" "o" {
  name  = var.name
  value = var.value
}
