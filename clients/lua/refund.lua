return (G or lib()).refund()
