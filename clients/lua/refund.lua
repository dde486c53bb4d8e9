return L().refund()
