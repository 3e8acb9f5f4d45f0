# A create in flight at a real plugin provider when the run is cancelled:
# local_file.a, then a time_sleep that waits var.sleep after it (the
# real-provider tier, wrapper/e2e/e2e_settle_real_test.go).
terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "2.9.0" }
    time  = { source = "hashicorp/time", version = "0.14.2" }
  }
}

variable "out" {
  type = string
}

variable "sleep" {
  type    = string
  default = "10m"
}

resource "local_file" "a" {
  filename = "${var.out}/a.txt"
  content  = "first\n"
}

resource "time_sleep" "wait" {
  create_duration = var.sleep
  triggers        = { a = local_file.a.id }
}
