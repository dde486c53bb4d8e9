return {limiter = limiter, release = release, inspect = inspect, refund = adjust, charge = adjust, several = several}
