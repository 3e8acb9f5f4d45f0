# A realistic preview configuration over HashiCorp's utility providers (the
# real-provider tier, wrapper/e2e/e2e_realproviders_test.go). Their ids are not
# all identities: local_file's and local_sensitive_file's are the SHA-1 of
# the content, time_static's the second it stands for, random_pet's the
# generated name, tls_private_key's the SHA-1 of the public key, and
# null_resource's and terraform_data's random per creation.
terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
    local   = { source = "hashicorp/local", version = "2.9.0" }
    null    = { source = "hashicorp/null", version = "3.3.1" }
    random  = { source = "hashicorp/random", version = "3.9.0" }
    time    = { source = "hashicorp/time", version = "0.14.2" }
    tls     = { source = "hashicorp/tls", version = "4.2.1" }
  }
}

variable "out" {
  description = "The directory the previews write their files to, one directory per scope."
  type        = string
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

resource "random_pet" "name" {
  prefix = local.scope
}

resource "local_file" "readme" {
  filename = coalesce(var.readme_file, "${var.out}/${local.scope}/README.md")
  content  = var.readme
}

resource "local_sensitive_file" "credentials" {
  filename = "${var.out}/${local.scope}/credentials"
  content  = var.db_password
}

resource "time_static" "created" {
  rfc3339 = var.created
}

resource "tls_private_key" "deploy" {
  algorithm = "ED25519"
}

resource "null_resource" "migrate" {
  triggers = {
    name = random_pet.name.id
  }
}

resource "terraform_data" "app" {
  input = {
    name    = random_pet.name.id
    created = time_static.created.rfc3339
  }
}

output "name" {
  value = random_pet.name.id
}

output "created" {
  value = time_static.created.rfc3339
}

output "deploy_key" {
  value = tls_private_key.deploy.public_key_openssh
}

output "db_password" {
  value     = var.db_password
  sensitive = true
}
