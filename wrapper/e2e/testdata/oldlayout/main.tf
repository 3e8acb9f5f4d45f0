# The configuration the old-layout store fixtures (testdata/oldlayout/*)
# were applied with by sponson before stacks: migrating those stores and
# planning this configuration again must show no change.
resource "terraform_data" "a" {
  input = "a"
}

resource "terraform_data" "b" {
  input = "b"
}
