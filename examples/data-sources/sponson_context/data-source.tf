data "sponson_context" "this" {}

# Names that differ per scope let main, pr-1 and pr-2 live side by side.
resource "terraform_data" "app" {
  input = "app-${data.sponson_context.this.scope}"
}

output "preview_url" {
  value = (
    data.sponson_context.this.pull_request == null
    ? null
    : "https://pr-${data.sponson_context.this.pull_request}.preview.example.com"
  )
}
