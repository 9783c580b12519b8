"""TODO facade"""
