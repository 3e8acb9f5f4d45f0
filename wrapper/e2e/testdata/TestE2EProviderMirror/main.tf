# The provider from a filesystem mirror written by `sponson provider mirror`,
# run by the engine directly: no wrapper, no dev_overrides.
terraform {
  required_providers {
    sponson = {
      source  = "sponson/sponson"
      version = ">= 0.0.1"
    }
  }
}

data "sponson_context" "this" {}

output "scope" {
  value = data.sponson_context.this.scope
}
