# Fifty resources that each take a moment to create, as real cloud resources
# do: the second configuration of the wrapper-overhead benchmark.
resource "terraform_data" "r" {
  count = 50
  input = "resource-${count.index}"
  provisioner "local-exec" {
    command = "sleep 0.2"
  }
}
