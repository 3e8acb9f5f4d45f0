# A configuration that names its resources per scope, so that main, pr-1 and
# pr-2 can live side by side in one environment. `sponson apply` gives each
# scope its own state; `sponson destroy` removes one scope and nothing else.

terraform {
  required_providers {
    sponson = {
      source = "sponson/sponson"
    }
  }
}

variable "tier" {
  description = "Size of the preview database."
  type        = string
  default     = "small"
}

# What the run is: environment, scope, branch, pull request, commit.
data "sponson_context" "this" {}

# Declares that this configuration is managed per scope.
resource "sponson_scope" "this" {}

resource "terraform_data" "app" {
  input = "app-${data.sponson_context.this.scope}"
}

resource "terraform_data" "database" {
  input = {
    name = "db-${data.sponson_context.this.scope}"
    tier = var.tier
  }
}

output "app_name" {
  value = terraform_data.app.output
}
