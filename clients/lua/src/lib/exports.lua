return {limiter = limiter, release = release, inspect = inspect, refund = refund, several = several}
