# Identity cases: the scope's identity policy is a variable, so that two
# scopes can declare different ones; `data` makes terraform_data objects
# (input is dynamically typed), `objects` fixture objects with a fixed
# value, and `imports` / `import_objects` import existing objects by id or
# name.
terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
    fixture = { source = "sponson/fixture" }
  }
}

variable "policy" {
  type    = map(list(string))
  default = null
}

variable "data" {
  type    = map(string)
  default = {}
}

variable "objects" {
  type    = map(string)
  default = {}
}

variable "imports" {
  type    = map(string)
  default = {}
}

variable "import_objects" {
  type    = map(string)
  default = {}
}

resource "sponson_scope" "this" {
  identity = var.policy
}

resource "terraform_data" "d" {
  for_each = var.data
  input    = each.value
}

import {
  for_each = var.imports
  to       = terraform_data.d[each.key]
  id       = each.value
}

resource "fixture_object" "o" {
  for_each = var.objects
  name     = each.value
  value    = "fixed"
}

import {
  for_each = var.import_objects
  to       = fixture_object.o[each.key]
  id       = each.value
}

# A sensitive identifying value: terraform_data.s[each] takes var.secret.
variable "secret" {
  type      = string
  default   = ""
  sensitive = true
}

variable "secret_at" {
  type    = set(string)
  default = []
}

resource "terraform_data" "s" {
  for_each = var.secret_at
  input    = var.secret
}
