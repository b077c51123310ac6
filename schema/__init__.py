"""The GraphQL contract: Strawberry types, inputs, enums and unions, and the assembled Schema.

Types convert from domain entities (`from_domain`) and never reach for storage: fields that need
more data use the per-request DataLoaders in the context. The Schema itself is assembled in
`schema.schema` from the resolvers; `frontend-contract/schema.graphql` is its exported SDL.
"""
