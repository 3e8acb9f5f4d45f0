# Every scope adds its callback URL to one allow-list. The lease keeps two runs
# from rewriting the list at once; wait = true queues behind another run
# instead of failing with LOCK_HELD.
ephemeral "sponson_lease" "callbacks" {
  name = "auth|client_id=web"
  wait = true
}

data "sponson_context" "this" {}

# Referencing the lease makes the engine hold it until this resource is
# applied, renew it meanwhile, and release it afterwards.
resource "terraform_data" "callback_url" {
  input = "https://${data.sponson_context.this.scope}.preview.example.com/callback"

  provisioner "local-exec" {
    command = "./add-callback.sh \"$URL\""
    environment = {
      URL         = self.input
      LEASE_TOKEN = ephemeral.sponson_lease.callbacks.token
    }
  }
}
