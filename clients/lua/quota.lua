return limiter('QUOTA')
