"""Helpers the network, cluster and client packages share: retry backoff and settling futures."""
