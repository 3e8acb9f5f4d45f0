# Declares that this configuration is managed per scope. The name comes from
# the run: pr-42 in pull request 42, main on the default branch.
resource "sponson_scope" "this" {}
