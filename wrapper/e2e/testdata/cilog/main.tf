# The configuration of the CI-log golden test (e2e_cilog_test.go): the
# scope's record, two resources and an output, as a small real root module.
# Each resource depends on the one before, so the engine's lines come in one
# order.
terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
  }
}

resource "sponson_scope" "this" {}

resource "terraform_data" "database" {
  input = { name = "db-${sponson_scope.this.name}", tier = "small" }
}

resource "terraform_data" "app" {
  input      = "app-${sponson_scope.this.name}"
  depends_on = [terraform_data.database]
}

output "app_name" {
  value = terraform_data.app.output
}
