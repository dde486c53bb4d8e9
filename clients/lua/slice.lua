return limiter('SLICE')
