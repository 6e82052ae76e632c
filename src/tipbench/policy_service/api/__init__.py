"""The policy service's HTTP API (`tipbench policy serve`): the app, its routes by scope, their
bodies, tokens, settings, metrics and the server that runs it. The public names are
`tipbench.policy_service`'s."""
