"""Envelope encryption of secrets (kubeconfigs): a keyring of RSA keys (`keyring`) and the
SecretBox that seals with it (`envelope`)."""
