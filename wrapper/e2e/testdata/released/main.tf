# One object, which a later configuration lets go with a removed block
# (removed.tf.later) instead of destroying it.
resource "terraform_data" "kept" {
  input = "kept"
}
