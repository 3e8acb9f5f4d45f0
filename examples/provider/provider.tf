terraform {
  required_providers {
    sponson = {
      source = "sponson/sponson"
    }
  }
}

# Under the sponson wrapper (`sponson apply`) the provider needs no settings:
# it uses the environment, the scope and the store the wrapper decided.
provider "sponson" {}
