# testdata/realproviders with the fixture provider's stand-ins for
# HashiCorp's resources, whose ids mean the same (TestE2EIDSemantics* of e2e_realproviders_test.go):
# fixture_file for local_file and local_sensitive_file (the SHA-1 of the
# content), fixture_timestamp for time_static (the second), fixture_pet for
# random_pet (a generated name with a prefix) and fixture_token for
# null_resource and tls_private_key (random, replaced when triggers change).
terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
    fixture = { source = "sponson/fixture" }
  }
}

variable "readme" {
  description = "The README of every preview: the same text in every scope."
  type        = string
  default     = "A preview environment of the app.\n"
}

variable "readme_file" {
  description = "The README's filename; null is the scope's own."
  type        = string
  default     = null
}

variable "created" {
  description = "The creation time of the preview (RFC 3339); null is the time of the apply."
  type        = string
  default     = null
}

variable "db_password" {
  description = "The preview database's password."
  type        = string
  sensitive   = true
}

data "sponson_context" "this" {}

resource "sponson_scope" "this" {}

locals {
  scope = data.sponson_context.this.scope
}

resource "fixture_pet" "name" {
  prefix = local.scope
}

resource "fixture_file" "readme" {
  filename = coalesce(var.readme_file, "${local.scope}.README.md")
  content  = var.readme
}

resource "fixture_file" "credentials" {
  filename = "${local.scope}.credentials"
  content  = var.db_password
}

resource "fixture_timestamp" "created" {
  rfc3339 = var.created
}

resource "fixture_token" "migrate" {
  triggers = {
    name = fixture_pet.name.id
  }
}

resource "terraform_data" "app" {
  input = {
    name    = fixture_pet.name.id
    created = fixture_timestamp.created.rfc3339
  }
}

output "name" {
  value = fixture_pet.name.id
}

output "created" {
  value = fixture_timestamp.created.rfc3339
}

output "db_password" {
  value     = var.db_password
  sensitive = true
}
