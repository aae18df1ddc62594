"""Training the course's reference GPT: ``gptcourse train`` and ``gptcourse sample``."""
