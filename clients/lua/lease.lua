return limiter('LEASE')
