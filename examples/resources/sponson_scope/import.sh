# The ID is <environment>/<scope>, and only the run's own scope can be
# imported: here the scope of pull request 42.
SPONSON_CTX_PR=42 terraform import sponson_scope.this preview/pr-42
