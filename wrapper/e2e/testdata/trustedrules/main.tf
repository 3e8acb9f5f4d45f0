# One file of hashicorp/local per scope, whose filename the variables choose:
# the trusted-rules tests (wrapper/e2e/e2e_trusted_rules_test.go) point two
# scopes at the same file and check whose rules decide who owns it.
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

variable "content" {
  description = "What it writes into it."
  type        = string
}

resource "sponson_scope" "this" {}

resource "local_file" "f" {
  filename = var.file
  content  = var.content
}
