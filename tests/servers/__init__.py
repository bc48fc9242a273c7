"""Real servers on 127.0.0.1 that stand in for the services adapters talk to."""
