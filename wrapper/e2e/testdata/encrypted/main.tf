# OpenTofu's own state and plan encryption: sponson refuses it before the
# lease, since it reads the state the engine writes.
terraform {
  required_providers {
    sponson = { source = "sponson/sponson" }
  }
  encryption {
    key_provider "pbkdf2" "k" {
      passphrase = "correct-horse-battery-staple"
    }
    method "aes_gcm" "m" {
      keys = key_provider.pbkdf2.k
    }
    state {
      method = method.aes_gcm.m
    }
    plan {
      method = method.aes_gcm.m
    }
  }
}

resource "sponson_scope" "this" {}

resource "terraform_data" "x" {
  input = "x"
}
