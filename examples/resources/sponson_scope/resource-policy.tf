# The scope with its policy, which the sponson wrapper reads from the plan.
resource "sponson_scope" "this" {
  # Two scopes that write the same environment variable of the same project
  # collide, whatever their resource addresses.
  identity = {
    vercel_project_environment_variable = ["project_id", "key", "target"]
  }

  # Changes to the domain, and to anything tagged as production, need an
  # approver: `sponson apply --approved-by alice`.
  production = {
    types      = ["vercel_project_domain"]
    attributes = { "tags.Environment" = "production" }
    approvers  = ["alice", "release-bot"]
  }

  # Every scope adds its own variables to one project: the wrapper holds the
  # project's lease while it writes them.
  parents = {
    vercel_project_environment_variable = ["project_id"]
  }
}
