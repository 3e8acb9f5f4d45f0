# Imports the record of the run's own scope, whatever scope the run is in.
import {
  to = sponson_scope.this
  id = "${data.sponson_context.this.environment}/${data.sponson_context.this.scope}"
}

data "sponson_context" "this" {}
