"""The user pool's pre sign-up trigger (`allowedEmailDomains`): who gets an account through a provider."""
