# Fifty resources: the configuration of the wrapper-overhead benchmark.
resource "terraform_data" "r" {
  count = 50
  input = "resource-${count.index}"
}
