# A provisioner that walks its ancestors, as a pull request's configuration
# could, and writes for each: its name, whether its environment could be
# read, and how many key variables it holds.
terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
  }
}

variable "out" {
  type = string
}

resource "sponson_scope" "this" {}

resource "terraform_data" "walk" {
  provisioner "local-exec" {
    command = <<-EOT
      pid=$$
      : > '${var.out}'
      while [ "$pid" -gt 1 ]; do
        comm=$(cat /proc/$pid/comm)
        if env=$(tr '\0' '\n' < /proc/$pid/environ 2>/dev/null); then readable=1; else readable=0; fi
        keys=$(printf '%s\n' "$env" | grep -c -E '^SPONSON_(STATE|PLAN)_KEY' || true)
        printf '%s\t%s\t%s\n' "$comm" "$readable" "$keys" >> '${var.out}'
        pid=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/$pid/status)
      done
    EOT
  }
}
