# In stacks/app: the outputs of stacks/network in the same environment and
# scope, or main's when this pull request did not apply stacks/network.
data "sponson_outputs" "network" {
  stack = "stacks/network"
}

resource "terraform_data" "app" {
  input = {
    vpc_id = data.sponson_outputs.network.values.vpc_id
    read   = data.sponson_outputs.network.read_scope
  }
}

# Sensitive outputs stay sensitive.
output "database_password" {
  value     = data.sponson_outputs.network.sensitive_values.database_password
  sensitive = true
}
