# Applied with the engine alone (`tofu apply`, `terraform apply`), the
# provider detects the scope itself and needs a store shared by every run of
# this configuration, or runs on other machines cannot see each other's leases.
provider "sponson" {
  environment = "preview"
  store       = "file:///var/lib/sponson"
}
