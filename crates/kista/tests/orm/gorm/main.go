// GORM (with go-sql-driver/mysql) as its documentation shows it: AutoMigrate of models whose
// association is declared `constraint:OnUpdate:CASCADE,OnDelete:SET NULL`, rows through the
// ORM, a key change cascading and a delete setting NULL, then AutoMigrate of a changed
// model. Prints "gorm ok" at the end; any failure exits non-zero.
//
// Built and run by crates/kista/tests/sql.rs (sql/orm_clients.rs): gormtest PORT
package main

import (
	"fmt"
	"log"
	"os"
	"strings"

	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

type Company struct {
	ID   uint
	Name string `gorm:"size:40"`
}

type User struct {
	ID        uint
	Name      string `gorm:"size:40"`
	CompanyID *uint
	Company   Company `gorm:"constraint:OnUpdate:CASCADE,OnDelete:SET NULL;"`
}

// The changed model: a wider name and a new column.
type UserV2 struct {
	ID        uint
	Name      string `gorm:"size:120"`
	Email     string `gorm:"size:80"`
	CompanyID *uint
	Company   Company `gorm:"constraint:OnUpdate:CASCADE,OnDelete:SET NULL;"`
}

func (UserV2) TableName() string { return "users" }

func check(err error, what string) {
	if err != nil {
		log.Fatalf("%s: %v", what, err)
	}
}

func expect(ok bool, format string, args ...any) {
	if !ok {
		log.Fatalf(format, args...)
	}
}

func open(port, database string) *gorm.DB {
	dsn := fmt.Sprintf("root:@tcp(127.0.0.1:%s)/%s?parseTime=true", port, database)
	db, err := gorm.Open(mysql.Open(dsn), &gorm.Config{Logger: logger.Default.LogMode(logger.Silent)})
	check(err, "open")
	return db
}

func main() {
	port := os.Args[1]
	check(open(port, "").Exec("CREATE DATABASE gormdb").Error, "create database")
	db := open(port, "gormdb")
	check(db.AutoMigrate(&Company{}, &User{}), "AutoMigrate")
	check(db.AutoMigrate(&Company{}, &User{}), "AutoMigrate again")
	expect(db.Migrator().HasConstraint(&User{}, "Company"), "the foreign key is there")

	acme := Company{Name: "acme"}
	check(db.Create(&acme).Error, "create company")
	ann := User{Name: "ann", CompanyID: &acme.ID}
	check(db.Create(&ann).Error, "create user")
	var found User
	check(db.Preload("Company").First(&found, ann.ID).Error, "preload")
	expect(found.Company.Name == "acme", "preloaded %v", found.Company)

	// OnUpdate:CASCADE: the company's new id reaches its users.
	check(db.Exec("UPDATE companies SET id = 50 WHERE id = ?", acme.ID).Error, "move key")
	check(db.First(&found, ann.ID).Error, "read user")
	expect(found.CompanyID != nil && *found.CompanyID == 50, "cascaded to %v", found.CompanyID)
	// OnDelete:SET NULL.
	check(db.Delete(&Company{}, 50).Error, "delete company")
	check(db.First(&found, ann.ID).Error, "read user")
	expect(found.CompanyID == nil, "set to NULL: %v", found.CompanyID)
	missing := uint(999)
	err := db.Create(&User{Name: "orphan", CompanyID: &missing}).Error
	expect(err != nil && strings.Contains(err.Error(), "1452"), "an orphan refused: %v", err)

	// The model changes: AutoMigrate alters the table, its foreign key kept.
	check(db.AutoMigrate(&Company{}, &UserV2{}), "AutoMigrate of the changed model")
	check(db.AutoMigrate(&Company{}, &UserV2{}), "AutoMigrate of the changed model again")
	long := strings.Repeat("y", 100)
	check(db.Create(&UserV2{Name: long, Email: "a@b"}).Error, "a wider name")
	err = db.Create(&UserV2{Name: "orphan", CompanyID: &missing}).Error
	expect(err != nil && strings.Contains(err.Error(), "1452"), "an orphan refused after: %v", err)
	check(db.Exec("DROP DATABASE gormdb").Error, "drop database")
	fmt.Println("gorm ok")
}
