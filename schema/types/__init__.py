"""One module per GraphQL type family."""
