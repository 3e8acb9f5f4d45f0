# A plan a reviewer reads: count instances past 9, a replacement forced by
# an attribute, named objects of the fixture provider that another scope
# may own (a refusal), and outputs (the preview's address, a secret).
terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
    fixture = { source = "sponson/fixture" }
  }
}

variable "objects" {
  type    = map(string)
  default = {}
}

variable "n" {
  type    = number
  default = 0
}

variable "db_version" {
  type    = string
  default = "1"
}

resource "sponson_scope" "this" {
  identity = {
    fixture_object = ["name"]
  }
  url_output = "url"
}

resource "fixture_object" "o" {
  for_each = var.objects
  name     = each.value
  value    = "made by ${sponson_scope.this.name}"
}

resource "terraform_data" "r" {
  count = var.n
  input = count.index
}

resource "terraform_data" "db" {
  input            = "db"
  triggers_replace = var.db_version
}

output "url" {
  value = "https://${sponson_scope.this.name}.preview.example"
}

output "instances" {
  value = length(terraform_data.r)
}

output "secret" {
  value     = "s3cret-${sponson_scope.this.name}"
  sensitive = true
}
