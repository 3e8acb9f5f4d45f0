# Outputs of every kind, for `sponson output`.
variable "name" {
  type    = string
  default = "demo"
}

resource "terraform_data" "app" {
  input = "https://${var.name}.preview.example"
}

output "url" {
  value = terraform_data.app.output
}

output "replicas" {
  value = 3
}

output "settings" {
  value = { name = var.name, tags = ["a", "b"] }
}

output "token" {
  value     = "s3cret-${var.name}"
  sensitive = true
}
